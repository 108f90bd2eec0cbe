from bench.answers.run import main

main()
