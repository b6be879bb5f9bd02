"""What the window does: one controller per concern (asking, opening files, sources,
indexing, the model, help), each a QObject that the window owns and wires to its view
(:mod:`app.views.main_window`) and to the backend (:mod:`app.backend`)."""
