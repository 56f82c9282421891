#ifndef CEMBEDDEDFILES_H
#define CEMBEDDEDFILES_H

// The files browserd serves from its own binary (the contract, the inspector page), compiled in by
// C23's `#embed` (CEmbeddedFiles.c): the bytes go straight into the object file, and the compiler's
// dependency file names each one, so editing openapi.yaml rebuilds this target. (SwiftPM's
// `.embedInCode` wrote each file as a Swift array literal of its bytes: ~264,000 elements that cost
// ~50 s of CPU in every debug build of BrowserdApp.)

#include <stddef.h>

/// One embedded file: its bytes, valid for the life of the process.
typedef struct {
    const unsigned char *bytes;
    size_t count;
} CEmbeddedFiles_file;

/// openapi.yaml: the contract, from the link to the top-level file.
CEmbeddedFiles_file CEmbeddedFiles_openapi_yaml(void);
/// The inspector page's files (inspector/).
CEmbeddedFiles_file CEmbeddedFiles_inspector_index_html(void);
CEmbeddedFiles_file CEmbeddedFiles_inspector_js(void);
CEmbeddedFiles_file CEmbeddedFiles_inspector_css(void);
CEmbeddedFiles_file CEmbeddedFiles_inspector_favicon_svg(void);

#endif
