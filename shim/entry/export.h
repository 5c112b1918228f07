// Symbols the preloaded library exports (everything else is hidden: -fvisibility=hidden).
#pragma once
#define ARSHIM_EXPORT extern "C" __attribute__((visibility("default")))
