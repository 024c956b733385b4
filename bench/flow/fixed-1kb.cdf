# every flow 1000 B: the small-flow ceiling benchmark
1000 0
1000 1
