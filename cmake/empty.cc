// Placeholder so a module with no sources yet is still a valid library.
