from seedscope.cli import main

main()
