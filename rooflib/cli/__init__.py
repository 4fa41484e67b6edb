"""The ``rooflib`` command line: a thin layer over the library, one subcommand per task.

``--json`` prints machine output with SI keys (``time_s``, ``busbw_bytes_per_s``); otherwise a table. Errors of
the library print one clear message on stderr and exit with code 2.

>>> from click.testing import CliRunner
>>> CliRunner().invoke(main, ["systems", "--json"]).exit_code
0
"""

from __future__ import annotations

import click

import rooflib
from rooflib.cli.aiconfigurator import import_aiconfigurator
from rooflib.cli.collective import collective
from rooflib.cli.common import RooflibGroup
from rooflib.cli.measure import bench, calibrate_cmd, import_nccl_tests, validate_cmd
from rooflib.cli.plot import plot
from rooflib.cli.report import report
from rooflib.cli.roofline import roofline_cmd
from rooflib.cli.systems import show, systems
from rooflib.cli.trace import trace
from rooflib.cli.transfer import transfer
from rooflib.cli.workloads import predict, what_if, workloads

__all__ = ["main"]


@click.group(cls=RooflibGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(rooflib.__version__, prog_name="rooflib")
def main() -> None:
    """Communication-aware rooflines, collective and transfer predictions for multi-GPU systems.

    \b
    Examples:
      rooflib systems
      rooflib show hgx-h100
      rooflib collective all_reduce --system hgx-h100 --gpus 8 --bytes 1KiB:1GiB
      rooflib transfer --system hgx-b200 --bytes 1MiB --sms 16
      rooflib roofline --system gb200-nvl72 --kernel gemm:1.1e12:4e8:2e8
      rooflib plot collective --systems hgx-a100,hgx-h100,hgx-b200 --gpus 8 --out busbw.png
      rooflib report --out rooflib-report
      rooflib predict gemm_rs --system hgx-h100 --gpus 8 --set k=16384
      rooflib trace model.py:step --inputs model.py:inputs --system hgx-h100 --gpus 8
      rooflib what-if ag_gemm --systems hgx-a100,hgx-h100,hgx-b200,gb200-nvl72 --gpus 8 --out whatif.png
      rooflib bench all --out runs/h200x2          (needs GPUs)
      rooflib calibrate runs/h200x2 --system hgx-h200 --out h200-x2.yaml
      rooflib validate runs/h200x2 --system hgx-h200 --profile h200-x2.yaml --out report/
    """


for _command in (
    systems,
    show,
    collective,
    transfer,
    roofline_cmd,
    plot,
    report,
    bench,
    calibrate_cmd,
    validate_cmd,
    import_nccl_tests,
    import_aiconfigurator,
    workloads,
    predict,
    what_if,
    trace,
):
    main.add_command(_command)
