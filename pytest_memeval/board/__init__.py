"""The board: a static site over many runs (JSON reports and run folders), pytest-free.

``load`` reads the inputs into entries (one per benchmark, system and flow of a source),
``comparability`` gives each entry its comparability key, ``verify`` its verification tier, ``site``
writes the pages and ``cli`` is the ``memeval-board`` command (docs/board.md)."""
