"""python -m kfin: the same as the kfin command."""

from kfin.commands.app import main

if __name__ == "__main__":  # not when a worker process imports this module again (spawn)
    main()
