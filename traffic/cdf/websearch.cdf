# WebSearch flow sizes: the DCTCP paper's web-search workload (M. Alizadeh et al., "Data
# Center TCP (DCTCP)", SIGCOMM 2010, Figure 4), as the tabulated points the HPCC simulator
# ships (Y. Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019; repository
# alibaba-edu/High-Precision-Congestion-Control, traffic_gen/WebSearch_distribution.txt,
# there in percent). Between points the CDF is linear in bytes; mean 1,711,250 B.
# size_bytes cdf
0 0
10000 0.15
20000 0.20
30000 0.30
50000 0.40
80000 0.53
200000 0.60
1000000 0.70
2000000 0.80
5000000 0.90
10000000 0.97
30000000 1
