// The JSON writer lives in its own module (the event mediators use it too); HTTPServer users get it here.
@_exported public import JSONWriter
