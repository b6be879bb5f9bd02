"""The model: bundles, encoder input features, ONNX encoding, adaptation, vocabulary."""
