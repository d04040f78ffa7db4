# Hadoop flow sizes: Facebook's Hadoop cluster (A. Roy et al., "Inside the Social Network's
# (Datacenter) Network", SIGCOMM 2015), as the tabulated points the HPCC simulator ships
# (Y. Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019; repository
# alibaba-edu/High-Precision-Congestion-Control, traffic_gen/FbHdp_distribution.txt, there
# in percent). Between points the CDF is linear in bytes; mean 120,420.75 B.
# size_bytes cdf
0 0
100 0.01
200 0.02
300 0.05
350 0.15
400 0.20
500 0.30
600 0.40
700 0.50
1000 0.60
2000 0.67
7000 0.70
30000 0.72
50000 0.82
80000 0.87
120000 0.90
300000 0.95
1000000 0.975
2000000 0.99
10000000 1
