from kfin.commands.app import main

main()
