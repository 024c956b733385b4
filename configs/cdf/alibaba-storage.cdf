# alibaba-storage: Alibaba production distributed storage flow sizes, 2019 (published with HPCC).
# source: alibaba-edu/High-Precision-Congestion-Control traffic_gen/AliStorage2019.txt @ 9f4be2a9ead8a90e8bf732c66bd758c00e58e5be
# columns: size_bytes cdf_percent. Mean with linear interpolation: 40,870 B.
0 0
4000 22.93
8000 69.21
16000 80.61
32000 90.47
64000 93.53
128000 96.77
256000 97.53
2000000 100
