"""The application layer: the CLI, the wheel's job tasks, the engines and every renderer. It sits
on top of ``operations`` and nothing below imports it."""
