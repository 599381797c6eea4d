"""Vendor-native context management (SPEC §11) honoured in front of any upstream."""
