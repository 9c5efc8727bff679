"""The one error type the models raise for input they cannot compute with."""


class ModelInputError(ValueError):
    """Input a model cannot use (negative rate, zero service time, reversed range, NaN...).

    The message is a complete sentence meant for the user; the CLI prints it and exits 2.
    """
