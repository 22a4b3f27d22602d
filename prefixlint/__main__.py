from prefixlint.cli import main

main()
