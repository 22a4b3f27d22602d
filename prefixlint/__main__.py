from prefixlint.launch import main

main()
