# web-search: DCTCP web-search flow sizes (Alizadeh et al., SIGCOMM 2010), as used by HPCC (Li et al., SIGCOMM 2019).
# source: alibaba-edu/High-Precision-Congestion-Control traffic_gen/WebSearch_distribution.txt @ 9f4be2a9ead8a90e8bf732c66bd758c00e58e5be
# columns: size_bytes cdf_percent. Mean with linear interpolation: 1,711,250 B.
0 0
10000 15
20000 20
30000 30
50000 40
80000 53
200000 60
1000000 70
2000000 80
5000000 90
10000000 97
30000000 100
