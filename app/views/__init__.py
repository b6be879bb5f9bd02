"""What the window shows: widgets, actions and menus, built and laid out, with no engine work
and no state of a search (that is :mod:`app.controllers`)."""
