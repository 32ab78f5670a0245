"""Live data in answers (SPEC rule 9, issue 14): the owner's query templates, the values
a customer's message holds, which action matches it, the 5-minute cache, and the
pipeline that yields ``RunLiveQuery`` for the runner to execute against the data source.

Pure like the rest of ragcore: the runner in ragio connects to the source, binds the
values as driver parameters and sends back the rows.
"""
