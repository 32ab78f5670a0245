"""Websites as sources of documents: fetching, crawling and storing their pages."""
