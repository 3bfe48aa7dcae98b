"""The reference cards' facts that the rules which depend on the card read, as the device reports them."""

# Memory bandwidth (Problem.hbm_bytes_per_s): bus width x memory clock, two transfers a clock; 132 SMs each.
H100_HBM, H200_HBM = 2 * 2619e6 * 5120 / 8, 2 * 3201e6 * 6144 / 8
