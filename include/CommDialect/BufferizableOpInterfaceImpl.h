//===- BufferizableOpInterfaceImpl.h - Bufferization of comm ops -*- C++
//-*-===//
//
// The comm ops' BufferizableOpInterface, as external models (as upstream
// dialects keep theirs): the collectives reduce their gradients' buffers in
// place, the wait hands back its start's buffers, and a compute skeleton
// gets fresh buffers for its results.
//
//===----------------------------------------------------------------------===//

#ifndef COMMDIALECT_BUFFERIZABLEOPINTERFACEIMPL_H
#define COMMDIALECT_BUFFERIZABLEOPINTERFACEIMPL_H

namespace mlir {
class DialectRegistry;

namespace comm {
/// Registers the comm ops' BufferizableOpInterface models in `registry`.
/// The dialect promises the interface: a context that bufferizes comm ops
/// must have them.
void registerBufferizableOpInterfaceExternalModels(DialectRegistry &registry);
} // namespace comm
} // namespace mlir

#endif // COMMDIALECT_BUFFERIZABLEOPINTERFACEIMPL_H
