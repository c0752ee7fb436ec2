"""The one exception type of the commopt package."""


class CommoptError(RuntimeError):
    """A plan that does not fit the model or the job, or a failed
    collective. The message names the parameter, collective or call."""
