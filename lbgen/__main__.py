from lbgen.cli.main import main

main()
