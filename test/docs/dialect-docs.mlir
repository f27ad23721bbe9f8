// The committed dialect references are what ODS generates now
// (regenerate with `ninja -C build hector-doc`).

// RUN: diff %hector_obj_root/docs/Dialects/HGraphDialect.md %hector_src_root/docs/dialects/HGraphDialect.md
// RUN: diff %hector_obj_root/docs/Dialects/HTmplDialect.md %hector_src_root/docs/dialects/HTmplDialect.md
