"""Websites as sources of documents: robots.txt, pages and their links, the crawl's rules."""
