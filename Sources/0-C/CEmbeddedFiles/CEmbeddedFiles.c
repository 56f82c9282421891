#include "CEmbeddedFiles.h"

#ifndef __has_embed
#error "CEmbeddedFiles needs C23 #embed (clang 19 or later): build with the Swift toolchain's own clang (Swift 6.3 has clang 21)"
#endif

// `#embed` is C23; clang accepts it in every C mode and says so, which is all this file asks of it.
#pragma clang diagnostic ignored "-Wc23-extensions"

static const unsigned char openapi_yaml[] = {
#embed "openapi.yaml"
};
static const unsigned char index_html[] = {
#embed "inspector/index.html"
};
static const unsigned char inspector_js[] = {
#embed "inspector/inspector.js"
};
static const unsigned char inspector_css[] = {
#embed "inspector/inspector.css"
};
static const unsigned char favicon_svg[] = {
#embed "inspector/favicon.svg"
};

CEmbeddedFiles_file CEmbeddedFiles_openapi_yaml(void) { return (CEmbeddedFiles_file){openapi_yaml, sizeof(openapi_yaml)}; }
CEmbeddedFiles_file CEmbeddedFiles_inspector_index_html(void) { return (CEmbeddedFiles_file){index_html, sizeof(index_html)}; }
CEmbeddedFiles_file CEmbeddedFiles_inspector_js(void) { return (CEmbeddedFiles_file){inspector_js, sizeof(inspector_js)}; }
CEmbeddedFiles_file CEmbeddedFiles_inspector_css(void) { return (CEmbeddedFiles_file){inspector_css, sizeof(inspector_css)}; }
CEmbeddedFiles_file CEmbeddedFiles_inspector_favicon_svg(void) { return (CEmbeddedFiles_file){favicon_svg, sizeof(favicon_svg)}; }
