from kfin.cli import main

main()
