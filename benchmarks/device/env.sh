# Sourced by the device scripts (from the repository root there): multicast off everywhere (NCCL NVLS, torch
# symmetric memory, NVSHMEM), unbuffered Python, $out (= $OUT, created), pydantic from the carried .wheels (the
# device has torch but no pydantic) and this checkout on PYTHONPATH.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
out=${OUT:-/tmp/out}
mkdir -p "$out"
python3 -m pip install -q --no-index --find-links .wheels pydantic >/dev/null 2>&1 || echo "pydantic install failed"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
