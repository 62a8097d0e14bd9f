"""battlesheep: agent, local match server and tools for the Battle Sheep course competition."""

__version__ = "0.1.0"
