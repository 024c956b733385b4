# data-mining: VL2 data-mining flow sizes (Greenberg et al., SIGCOMM 2009).
# source: HKUST-SING/TrafficGenerator conf/VL2_CDF.txt @ 8e7c51680890fb3d91b7bc3e9a56da8e987f1bf7
# columns: size_bytes cdf_fraction. Mean with linear interpolation: 12,658,199 B.
0   0
180 0.1
216 0.2
560 0.3
900 0.4
1100 0.5
1870 0.6
3160 0.7
10000 0.8
400000 0.9
3160000 0.95
100000000 0.98
1000000000 1
