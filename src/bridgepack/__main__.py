"""``python -m bridgepack`` runs the CLI (also what ``torchrun -m bridgepack`` uses)."""

from bridgepack.cli import console_main

if __name__ == "__main__":
    console_main()
