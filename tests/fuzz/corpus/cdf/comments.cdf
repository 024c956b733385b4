# comments and blank lines

# header comment
  0	0    # tab separated
3	6.48826

64	15.5271  # trailing comment
1e3	50
2.5e4	99.5
1e6	100
