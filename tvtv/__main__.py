from tvtv.cli import main

main()
