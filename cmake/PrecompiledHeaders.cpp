// The translation unit that compiles cmake/PrecompiledHeaders.h.
