# fb-hadoop: Facebook Hadoop cluster flow sizes (Roy et al., "Inside the Social Network's (Datacenter) Network", SIGCOMM 2015), as used by HPCC.
# source: alibaba-edu/High-Precision-Congestion-Control traffic_gen/FbHdp_distribution.txt @ 9f4be2a9ead8a90e8bf732c66bd758c00e58e5be
# columns: size_bytes cdf_percent. Mean with linear interpolation: 120,421 B.
0 0
100 1
200 2
300 5
350 15
400 20
500 30
600 40
700 50
1000 60
2000 67
7000 70
30000 72
50000 82
80000 87
120000 90
300000 95
1000000 97.5
2000000 99
10000000 100
