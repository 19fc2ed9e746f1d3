"""``python -m touchstone.cli``."""

from touchstone.cli.app import main

main()
