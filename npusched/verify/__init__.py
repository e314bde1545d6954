"""Independent feasibility checks. Every schedule from every method goes through here."""

from npusched.verify.schedule import VerificationError, VerifyReport, verify

__all__ = ["VerificationError", "VerifyReport", "verify"]
