"""Re-validation of a built task set: one implementation for every language, in
`code_gym.grading.revalidate`; its names stay importable from here."""
from code_gym.grading.revalidate import Revalidation, RevalidationReport, revalidate, revalidate_task

__all__ = ["Revalidation", "RevalidationReport", "revalidate", "revalidate_task"]
