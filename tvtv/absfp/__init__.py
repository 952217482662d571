"""Float models (abstract and IEEE), integer and bool domains, the abstract bit width."""
