"""The bag-of-words model of the Zipf embedding example: an embedding of
`vocab` rows of `dim`, the mean over a sample's tokens, a linear
classifier. `bag_of_words_coo` (the defaults, sparse COO embedding
gradients) is the factory commopt-export.py takes:

    commopt-export.py bag_of_words:bag_of_words_coo \\
        --example-inputs zipf_data:example_batch --batch-size 32
"""

from torch import nn

VOCAB, DIM, CLASSES = 100000, 64, 4


class BagOfWords(nn.Module):
    def __init__(self, vocab=VOCAB, dim=DIM, classes=CLASSES, coo=False):
        super().__init__()
        self.embedding = nn.Embedding(vocab, dim, sparse=coo)
        self.fc = nn.Linear(dim, classes)

    def forward(self, tokens):
        return self.fc(self.embedding(tokens).mean(dim=1))


def bag_of_words_coo():
    return BagOfWords(coo=True)
