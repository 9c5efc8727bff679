"""queuelens dashboard: the Dash app, the `queuelens` CLI and exported reports.

It presents what collectors read and models compute; it computes nothing they should.
"""
