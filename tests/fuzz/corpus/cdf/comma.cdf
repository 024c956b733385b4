# comma-separated
1,0.1
2,0.25
4,0.5
8,0.75
16,1.0
