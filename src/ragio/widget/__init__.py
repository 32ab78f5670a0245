"""The chat widget's sites, token key and quota counters in the service's database."""
