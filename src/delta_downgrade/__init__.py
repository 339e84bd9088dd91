"""delta-downgrade: drop Delta Lake table features and lower the protocol, RFC-compliant."""

__version__ = "0.1.0"
ENGINE_INFO = f"delta-downgrade/{__version__}"
