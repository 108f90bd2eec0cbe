from bench.research.run import main

main()
