"""Allow ``python -m semspec`` to run the CLI."""

from semspec.cli.app import main

if __name__ == "__main__":
    main()
