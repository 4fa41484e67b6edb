"""``python -m rooflib`` runs the command-line interface."""

from rooflib.cli import main

if __name__ == "__main__":
    main(prog_name="rooflib")
