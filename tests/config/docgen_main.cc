// config_docgen: prints docs/config.md, generated from the config schema.
// Run: build/tests/config/config_docgen > docs/config.md
#include <cstdio>

#include "config/config.h"

int main() {
  std::fputs(zerotrain::config::config_reference_markdown().c_str(), stdout);
  return 0;
}
