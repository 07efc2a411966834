"""Tests of one module or command on hand-made cases whose answers are worked out in the test."""
