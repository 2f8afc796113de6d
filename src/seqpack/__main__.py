"""``python -m seqpack`` runs the CLI (also what ``torchrun -m seqpack`` uses)."""

from seqpack.cli import console_main

if __name__ == "__main__":
    console_main()
