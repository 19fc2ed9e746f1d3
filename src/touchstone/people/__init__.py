"""People in the loop: human annotation, production feedback, the active-learning queue, rankings
from pairwise votes, agreement between annotators and the calibration of judges against people.

Import the modules themselves (``touchstone.people.feedback``, ``touchstone.people.annotations``...):
this package loads nothing by itself."""
