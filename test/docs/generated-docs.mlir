// The committed dialect and pass references are what ODS generates now
// (regenerate with `ninja -C build hector-doc`).

// RUN: diff %hector_obj_root/docs/Dialects/HGraphDialect.md %hector_src_root/docs/dialects/HGraphDialect.md
// RUN: diff %hector_obj_root/docs/Dialects/HGraphOpInterfaces.md %hector_src_root/docs/dialects/HGraphOpInterfaces.md
// RUN: diff %hector_obj_root/docs/Dialects/HTmplDialect.md %hector_src_root/docs/dialects/HTmplDialect.md
// RUN: diff %hector_obj_root/docs/HectorConversionPasses.md %hector_src_root/docs/passes/HectorConversionPasses.md
// RUN: diff %hector_obj_root/docs/HGraphTransformsPasses.md %hector_src_root/docs/passes/HGraphTransformsPasses.md
// RUN: diff %hector_obj_root/docs/HectorTargetPasses.md %hector_src_root/docs/passes/HectorTargetPasses.md
